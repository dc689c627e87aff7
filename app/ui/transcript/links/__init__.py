"""Links in the transcript: the app's own, which reply text cannot forge, and a reply's own links.

- action_links.py: The app's own links in the transcript (Copy, Edit, Regenerate, a code block's Copy, Retry...): hrefs that reply
- link_guard.py: Links and resources of replies. A reply is text a model wrote: its links open in the system browser only after
"""
