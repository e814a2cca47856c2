"""Run inside the clean interpreter: import the packaged entry module, feed it every event, print the responses.

Started as ``python3.12 -I -S lambda_invoke.py PACKAGE_DIR EVENTS_DIR``: no site-packages, no user paths, no
PYTHON* variables, so the package directory is the only place imports can come from.
"""

import json
import sys
import time
from pathlib import Path


class LambdaContext:
    function_name = "toolrec-local-prod"
    memory_limit_in_mb = 1769
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:toolrec-local-prod"
    aws_request_id = "c0ffee00-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def main(package: str, events: str) -> None:
    sys.path.insert(0, package)
    started = time.perf_counter()
    from handler import lambda_entry

    init_ms = (time.perf_counter() - started) * 1000
    responses = {}
    for path in sorted(Path(events).glob("*.json")):
        if path.name == "env.json":
            continue
        responses[path.name] = lambda_entry.handler(json.loads(path.read_text()), LambdaContext())
    outside = [
        name
        for name, module in sys.modules.items()
        if name not in ("__main__", "__mp_main__") and _outside(getattr(module, "__file__", None), package)
    ]
    print(json.dumps({"init_ms": init_ms, "responses": responses, "imported_from_outside": outside}))


def _outside(module_file: "str | None", package: str) -> bool:
    stdlib = str(Path(json.__file__).parent.parent)
    return module_file is not None and not module_file.startswith((package, stdlib))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
