#!/usr/bin/env bash
# Renders the simulation's report.html to a PNG for the README, in headless
# Chromium at a fixed window size, so that every shot of the report has the
# same frame.
#
# Usage: scripts/report_screenshot.sh [REPORT_HTML] [OUT_PNG]
#   REPORT_HTML  a report to render; when absent, the default run
#                (`agentsensus simulate`, Hamlet, by $PYTHON, default
#                python3: set PYTHONPATH=python to run this checkout's code)
#                writes one into a temporary directory first (2-3 minutes
#                on two busy cores; the screenshot itself takes 2 s)
#   OUT_PNG      default: docs/img/report.png
# Environment: WIDTH and HEIGHT (default 1100 x 1350, the window the README's
# picture has), CHROMIUM (the browser to run; default: the first of chromium,
# chromium-browser, google-chrome on PATH). On Debian: apt-get install chromium.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPORT=${1:-}
OUT=${2:-$ROOT/docs/img/report.png}
WIDTH=${WIDTH:-1100}
HEIGHT=${HEIGHT:-1350}
die() { echo "report_screenshot.sh: $*" >&2; exit 2; }

BROWSER=${CHROMIUM:-}
if [ -z "$BROWSER" ]; then
    for b in chromium chromium-browser google-chrome; do
        if command -v "$b" >/dev/null 2>&1; then BROWSER=$b; break; fi
    done
fi
[ -n "$BROWSER" ] || die "no Chromium on PATH (Debian: apt-get install chromium; or set CHROMIUM)"
[ -d "$(dirname "$OUT")" ] || die "$(dirname "$OUT") is not a directory"

TMP=$(mktemp -d /tmp/agentsensus-shot.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
if [ -z "$REPORT" ]; then
    "${PYTHON:-python3}" -m agentsensus.cli simulate --out "$TMP/report" --quiet \
        || die "the default run failed (is agentsensus importable by ${PYTHON:-python3}? or give REPORT_HTML)"
    REPORT=$TMP/report/report.html
fi
[ -f "$REPORT" ] || die "$REPORT is not a file"
REPORT=$(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")

# --no-sandbox: Chromium's sandbox refuses to start as root (a container);
# the page is our own file, with no script and no network.
# A profile of its own, so a running browser of the user's is not reused.
"$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --mute-audio \
    --user-data-dir="$TMP/profile" --window-size="$WIDTH,$HEIGHT" --force-device-scale-factor=1 \
    --screenshot="$TMP/shot.png" "file://$REPORT" >"$TMP/chromium.log" 2>&1 \
    || { tail -5 "$TMP/chromium.log" >&2; die "Chromium failed (its log is above)"; }
[ -s "$TMP/shot.png" ] || die "Chromium wrote no screenshot"
mv "$TMP/shot.png" "$OUT"
echo "wrote $OUT (${WIDTH}x${HEIGHT} from $REPORT)"
