#!/bin/sh
# npm run setup: installs the real components the tests start (Redis,
# haproxy, nginx, faketime, promtool, openssl, curl, chrt, Chromium) with apt-get,
# only those missing, and does nothing when every one is there. Without
# apt-get it names what to install and stops. docs/testing.md says what each
# one is for.
set -eu

# command:Debian package, one per component the tests start.
NEEDED="redis-server:redis-server redis-cli:redis-server haproxy:haproxy nginx:nginx-light faketime:faketime promtool:prometheus openssl:openssl curl:curl chrt:util-linux /usr/bin/chromium:chromium"

missing=""
for pair in $NEEDED; do
  command=${pair%%:*}
  package=${pair#*:}
  if [ "${command#/}" != "$command" ]; then
    [ -x "$command" ] && continue
  elif command -v "$command" >/dev/null 2>&1; then
    continue
  fi
  case " $missing " in *" $package "*) ;; *) missing="$missing $package" ;; esac
done
missing=${missing# }

if [ -z "$missing" ]; then
  echo "setup: everything the tests start is installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: no apt-get here; install these (Debian package names) and run the tests again: $missing" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: not root and no sudo; as root run: apt-get install -y --no-install-recommends $missing" >&2
    exit 1
  fi
  sudo="sudo"
fi
echo "setup: installing $missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ ! -x /usr/bin/chromium ]; then
  echo "setup: /usr/bin/chromium is still missing (Ubuntu ships Chromium as a snap): the browser tests need Debian's chromium package at that path" >&2
  exit 1
fi
echo "setup: done"
