"""Documents from the command line: `specchat-cli index` and `generate --docs` (app/documents does the work).

- docs_options.py: `generate --docs PATH`: documents put whole when they fit, else indexed and their passages cited.
- embedding_option.py: `--embedding FILE` for both: passages found by meaning as well as by their words.
- index_cmd.py: `specchat-cli index PATH... [--db FILE]`: build or refresh a documents index, with a progress bar.
"""
