"""A small `curl` for the engine image, so compose healthchecks like
`curl -fsS http://localhost:8000/health` work as they do with the real image.

Supports -f/--fail, -s, -S, -o FILE, -m/--max-time N, -X METHOD, -H HEADER, -d DATA.
Exit codes as curl: 7 cannot connect, 22 HTTP error with --fail, 28 timeout.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field


@dataclass
class Options:
    """The parsed command line."""

    url: str = ""
    fail: bool = False
    silent: bool = False
    show_error: bool = False
    output: str | None = None
    timeout: float = 30.0
    method: str | None = None
    data: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def parse(argv: list[str]) -> Options:
    """curl's flags, including combined short ones like -fsS."""
    opts = Options()
    args = iter(argv)
    for arg in args:
        if arg in ("-o", "--output"):
            opts.output = next(args)
        elif arg in ("-m", "--max-time"):
            opts.timeout = float(next(args))
        elif arg in ("-X", "--request"):
            opts.method = next(args)
        elif arg in ("-H", "--header"):
            key, _, value = next(args).partition(":")
            opts.headers[key.strip()] = value.strip()
        elif arg in ("-d", "--data", "--data-raw"):
            opts.data = next(args).encode()
        elif arg == "--fail":
            opts.fail = True
        elif arg.startswith("-") and not arg.startswith("--"):
            opts.fail |= "f" in arg
            opts.silent |= "s" in arg
            opts.show_error |= "S" in arg
        elif not arg.startswith("-"):
            opts.url = arg if "://" in arg else f"http://{arg}"
    return opts


def complain(opts: Options, code: int, message: str) -> int:
    """Print curl's error line (unless silenced) and return its exit code."""
    if not opts.silent or opts.show_error:
        print(f"curl: ({code}) {message}", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    """Fetch one URL."""
    opts = parse(argv)
    request = urllib.request.Request(
        opts.url, data=opts.data, headers=opts.headers, method=opts.method
    )
    try:
        with urllib.request.urlopen(request, timeout=opts.timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as err:
        if opts.fail:
            return complain(opts, 22, f"The requested URL returned error: {err.code}")
        body = err.read()
    except TimeoutError:
        return complain(opts, 28, "Operation timed out")
    except (urllib.error.URLError, OSError) as err:
        return complain(opts, 7, f"Failed to connect to {opts.url}: {err}")
    if opts.output:
        with open(opts.output, "wb") as out:
            out.write(body)
    else:
        sys.stdout.buffer.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
