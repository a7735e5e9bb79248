#!/usr/bin/env bash
# Renders a simulation report (simulations/report.ts) to a PNG with headless Chromium, so that
# a person (or an agent) can look at the page without a desktop browser.
#
#   scripts/report-screenshot.sh <report.html> <out.png> [width,height]
#
# Installs Debian's chromium with apt-get when it is missing (as root, or through sudo).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 <report.html> <out.png> [width,height]" >&2
  exit 2
fi
report=$1
out=$2
size=${3:-1600,1200}

if [[ ! -f $report ]]; then
  echo "$0: no such file: $report" >&2
  exit 2
fi

# Chromium resolves file:// URLs against nothing, so both paths must be absolute.
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
report_abs=$(abs "$report")
mkdir -p "$(dirname "$out")"
out_abs=$(abs "$out")

find_chromium() { command -v chromium || command -v chromium-browser || true; }

browser=$(find_chromium)
if [[ -z $browser ]]; then
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null; then
    as_root=(sudo)
  else
    echo "$0: chromium is missing and neither root nor sudo is available to install it" >&2
    exit 1
  fi
  echo "installing chromium with apt-get..." >&2
  "${as_root[@]}" apt-get update >&2
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y chromium >&2
  browser=$(find_chromium)
  if [[ -z $browser ]]; then
    echo "$0: apt-get install chromium did not provide a chromium binary" >&2
    exit 1
  fi
fi

# --no-sandbox: containers often run as root, where Chromium's sandbox refuses to start.
# --hide-scrollbars keeps the scrollbar out of the picture. Chromium is chatty (D-Bus, fonts,
# Debian's /dev/shm check); its output is shown in full only when it fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --screenshot="$out_abs" --window-size="$size" "file://$report_abs" >"$log" 2>&1; then
  cat "$log" >&2
  echo "$0: chromium failed" >&2
  exit 1
fi

if [[ ! -s $out_abs ]]; then
  cat "$log" >&2
  echo "$0: chromium wrote no screenshot to $out_abs" >&2
  exit 1
fi
echo "$out_abs"
