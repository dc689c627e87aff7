"""The Get-models panel: curated pairs and Hugging Face search, downloaded off the GUI thread.

- download_row.py: The panel's download row: the running download's progress, Cancel, and Resume after a stop.
- panel.py: The "Get models" panel: curated target + draft pairs first, then a search of the Hugging Face Hub, a
- search_tab.py: The "Search the Hub" tab: a query, the GGUF repositories that match, and the chosen one's files by quantization.
- token_row.py: The panel's token row: a Hugging Face access token asked for where a repository needs one, checked, stored.
- views.py: The pieces the Get-models panel shows: a card per curated pair, the search results, a repo's files by quant.
- worker.py: Run the Get-models panel's network work (search, listing, token check, downloads) on a thread pool, each answer to its handlers.
"""
