"""Screenshot an HTML report with headless Chromium, to look at it the way a reader will.

    python -m nki_assist.report.screenshot review.html review.png [--width 1200] [--height 9000]

Needs a Chromium or Chrome binary (`chromium`, `chromium-browser`, `google-chrome`, or $CHROME);
on Debian: `apt-get install chromium`. The page is self-contained, so no network is used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--hide-scrollbars", "--no-first-run"]


def find_browser() -> str | None:
    env = os.environ.get("CHROME")
    if env and shutil.which(env):
        return shutil.which(env)
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def screenshot(html: Path, png: Path, width: int = 1200, height: int = 9000, timeout: float = 120.0) -> Path:
    """Render `html` to `png`; raises RuntimeError with the browser's output when it fails."""
    browser = find_browser()
    if browser is None:
        raise RuntimeError("no Chromium/Chrome found (install `chromium`, or set CHROME)")
    png = png.resolve()
    with tempfile.TemporaryDirectory(prefix="nki-assist-chromium-") as profile:
        cmd = [browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={width},{height}", html.resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not png.is_file():
        raise RuntimeError(f"{browser} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return png


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nki_assist.report.screenshot", description=__doc__.split("\n")[0])
    p.add_argument("html", type=Path)
    p.add_argument("png", type=Path)
    p.add_argument("--width", type=int, default=1200)
    p.add_argument("--height", type=int, default=9000, help="tall enough for the whole report")
    args = p.parse_args(argv)
    try:
        out = screenshot(args.html, args.png, args.width, args.height)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"screenshot: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
