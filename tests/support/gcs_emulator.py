"""A Google Cloud Storage emulator on 127.0.0.1 for the tests: ``gcp-storage-emulator`` (PyPI),
with the generation preconditions the run's lock relies on added.

The emulator serves the JSON API Google's client speaks, but ignores ``ifGenerationMatch``
(an upload or a delete conditional on an object's generation, ``0`` meaning "only if absent").
This module starts it with that one rule added in front of the handlers that write or delete
an object: the condition is checked against the object's current generation, under one lock
so that two racing requests cannot both pass, and a failed one is answered 412 as GCS does.

    python -m tests.support.gcs_emulator PORT     # serves until killed
"""

from __future__ import annotations

import sys
import threading
from http import HTTPStatus
from typing import Any

_ATOMIC = threading.Lock()


def _generation(storage: Any, bucket: str, name: str | None) -> int:
    from gcp_storage_emulator.exceptions import NotFound

    if not name:
        return 0
    try:
        return int(storage.get_file_obj(bucket, name)["generation"])
    except NotFound:
        return 0


def _target(handler: str, request: Any, storage: Any) -> str | None:
    """The object a write or delete request names."""
    if handler == "delete":
        return request.params["object_id"]
    if "upload_id" in request.query:  # a resumable upload's chunks: its session names it
        return storage.get_resumable_file_obj(request.query["upload_id"][0]).get("name")
    if "name" in request.query:
        return request.query["name"][0]
    data = request.data
    if isinstance(data, dict):
        meta = data.get("meta") if "meta" in data else data
        return (meta or {}).get("name")
    return None


def _guarded(handler: str, original: Any) -> Any:
    def guarded(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = request.query.get("ifGenerationMatch")
        if not wanted:
            return original(request, response, storage, *args, **kwargs)
        with _ATOMIC:
            name = _target(handler, request, storage)
            current = _generation(storage, request.params["bucket_name"], name)
            if current != int(wanted[0]):
                response.status = HTTPStatus.PRECONDITION_FAILED
                response.json(
                    {
                        "error": {
                            "code": 412,
                            "message": "At least one of the pre-conditions "
                            "you specified did not hold.",
                            "errors": [
                                {"reason": "conditionNotMet", "message": "Precondition Failed"}
                            ],
                        }
                    }
                )
                return None
            return original(request, response, storage, *args, **kwargs)

    return guarded


def with_preconditions() -> None:
    """Put the precondition check in front of the emulator's write and delete handlers."""
    from gcp_storage_emulator import server
    from gcp_storage_emulator.handlers import objects

    for name in ("insert", "upload_partial", "delete", "xml_upload"):
        original = getattr(objects, name)
        guarded = _guarded(name, original)
        setattr(objects, name, guarded)  # the router's own fallback looks it up here
        for _, methods in server.HANDLERS:
            for method, handler in list(methods.items()):
                if handler is original:
                    methods[method] = guarded


def main(port: int) -> None:
    with_preconditions()
    from gcp_storage_emulator.server import create_server

    server = create_server("127.0.0.1", port, in_memory=True)
    server.run()


if __name__ == "__main__":
    main(int(sys.argv[1]))
