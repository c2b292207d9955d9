#!/usr/bin/env bash
# Installs PostgreSQL when its server binaries are missing: the end-to-end tests of the
# external datastore run a throwaway PostgreSQL (test/envtest/postgres.go). Unlike the
# Go tools, it cannot be built through the module proxy, so it comes from the
# distribution's packages (Debian/Ubuntu, as this project's CI machines run).
set -euo pipefail

found() {
	command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
	# Debian's packages keep the server binaries out of PATH.
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

if found; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[tools] PostgreSQL (initdb, postgres) is missing and there is no apt-get: install it by hand" >&2
	exit 1
fi
echo "[tools] installing PostgreSQL (the external-datastore tests need it)..." >&2
sudo=()
if [[ $EUID -ne 0 ]]; then sudo=(sudo); fi
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y postgresql
