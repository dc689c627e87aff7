"""The Get-models panel: curated pairs and Hugging Face search, downloaded off the GUI thread.

- panel.py: The "Get models" panel: curated target + draft pairs first, then a search of the Hugging Face Hub, a
- views.py: The pieces the Get-models panel shows: a card per curated pair, the search results, a repo's files by quant.
- worker.py: Run the Get-models panel's network work (search, listing, token check, downloads) on a thread pool.
"""
