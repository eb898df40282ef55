#!/bin/sh
# Initializes the cluster on first start (owner $POSTGRES_USER, whose
# password is the first line of $POSTGRES_PASSWORD_FILE, a Swarm secret),
# then runs postgres in the foreground. Only dash builtins and the
# PostgreSQL binaries exist in this image.
set -eu
user="${POSTGRES_USER:-hangar}"
db="${POSTGRES_DB:-hangar}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ ! -r "${POSTGRES_PASSWORD_FILE:-}" ]; then
		echo "postgres: POSTGRES_PASSWORD_FILE (${POSTGRES_PASSWORD_FILE:-unset}) is not a readable file" >&2
		exit 1
	fi
	initdb -D "$PGDATA" -U "$user" --pwfile="$POSTGRES_PASSWORD_FILE" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$db" != postgres ]; then
		echo "CREATE DATABASE \"$db\" OWNER \"$user\"" | postgres --single -D "$PGDATA" -j postgres >/dev/null
	fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
