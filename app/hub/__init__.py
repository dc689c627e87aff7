"""Models from the Hugging Face Hub and models already on disk. Plain Python, no Qt.

- curated.py: known-good target + draft pairs (data).
- client.py: search GGUF repositories and list a repository's GGUF files (huggingface_hub's HfApi).
- repo_files.py: GGUF files as models: split parts merged, grouped by quantization.
- repo_projector.py: the picture projector (mmproj) a searched model's download brings along, and its name.
- download.py / download_plan.py: resumable, verified downloads into the models folder, as one job per action.
- token.py: the access token, stored where huggingface_hub keeps it.
- discovery.py: GGUF files in the HF cache, LM Studio's folder and user folders, listed in place.
- errors.py: HubError and its subclasses, each with a message for a person.
- environment.py: HF_ENDPOINT, HF_HOME and offline mode, read at call time.

huggingface_hub is imported only inside the functions that need it.
"""
