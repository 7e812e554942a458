"""The ASGI extension by which a client in the apiserver's own process (`tinykube up`'s components) receives watch
events as the watch cache's decoded objects instead of JSON lines: one decoded copy of each object in the process,
shared by the cache and every in-process informer, and no encode and parse between them.

A transport that offers it puts `EXTENSION` in the request scope's `extensions`; a watch handler that sees it may
send `{"type": EVENTS_MESSAGE, "events": [{"type": ..., "object": ...}, ...]}` in place of a body chunk. The objects
are the cache's own: a receiver treats them as read-only, as client-go's informer caches are (with
`CHECK_ENV` set to a file's path, the cache compares each object it lets go with the bytes it was decoded from and
appends the key of any that was changed to that file, for the tests that hold the components to the rule).
"""

EXTENSION = "tinykube.shared_objects"
EVENTS_MESSAGE = "tinykube.watch.events"
CHECK_ENV = "TINYKUBE_CHECK_SHARED_OBJECTS"
