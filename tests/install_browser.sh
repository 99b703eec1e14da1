#!/usr/bin/env bash
# Headless Chromium and its WebDriver for tests/system/run/test_webui_browser.py (Debian packages;
# the browser is never downloaded by a Python package). Does nothing when both are there.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium chromium-driver
