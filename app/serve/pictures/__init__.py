"""OpenAI's image_url parts read into the engine's pictures: data: URLs at once, http(s) URLs (when the server
fetches them) on the event loop before the request queues.

- parts.py: image_url parts read into pictures (data: URLs) or PictureUrls to fetch, bad ones refused with a sentence.
- fetch.py: Pictures by URL fetched for one request: one deadline for all, every hop's addresses checked.
"""
