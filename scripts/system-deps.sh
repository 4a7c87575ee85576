#!/usr/bin/env bash
# Installs the Debian packages carousel's tests need when they are missing, and starts a PostgreSQL on
# 127.0.0.1:5432 when none answers there. Safe to run again: it only acts on what is missing.
set -euo pipefail

packages=(
  python3 python3-venv python3-dev gcc make
  postgresql-client
  gfal2 gfal2-plugin-http gfal2-plugin-file gfal2-util-scripts python3-gfal2   # real Tape REST clients (file: gfal-copy to a local file)
  xrootd-server xrootd-client                                  # real XRootD for the prepare plug-in
  iproute2 util-linux                                          # ip, unshare: loopback-only namespaces
  chromium                                                     # headless screenshots of the dashboard
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "system-deps: need root to run: $*" >&2; exit 2
  fi
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --runtime: only what running the service needs (the embedded defaults need no database server).
if [ "${1:-}" = "--runtime" ]; then packages=(python3 python3-venv make); fi

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "system-deps: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi

[ "${1:-}" = "--runtime" ] && exit 0

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
if ! pg_up; then
  echo "system-deps: no PostgreSQL on 127.0.0.1:5432; installing and starting one"
  installed postgresql || apt_install postgresql
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  # Tests connect as postgres over loopback without a password, as on the developers' machines.
  if ! as_root grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart \
    || as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
pg_up || { echo "system-deps: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
echo "system-deps: ready (PostgreSQL on 127.0.0.1:5432, gfal2 and xrootd installed)"
