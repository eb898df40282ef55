#!/bin/sh
# rootfs.sh DIR: DIR/rootfs, the file tree of the postgres image from this host's
# PostgreSQL packages (Debian: apt-get install postgresql): the server
# binaries and the libraries ldd lists for them, the share directory,
# the extension libraries initdb loads, dash for the entrypoint, a passwd
# entry (initdb looks up its user); DIR/home, the postgres user's home
# with an empty data directory (the Dockerfile gives it to that user).
set -eu
out="$1"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
	echo "rootfs.sh: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)" >&2
	exit 1
fi
pg=$(dirname "$bin")
v=$(basename "$pg")
here=$(dirname "$0")
rm -rf "$out"
mkdir -p "$out/rootfs" "$out/home/data"
home="$out/home"
out="$out/rootfs"
mkdir -p "$out/usr/lib/postgresql/bin" "$out/usr/lib/postgresql/$v/bin" "$out/usr/lib/postgresql/$v/lib" \
	"$out/bin" "$out/etc" "$out/tmp" "$out/usr/share/zoneinfo/Etc"
# The binaries find share/ and lib/ relative to their own directory.
for b in postgres initdb pg_isready; do
	cp -L "$bin/$b" "$out/usr/lib/postgresql/$v/bin/$b"
	ln -s "../$v/bin/$b" "$out/usr/lib/postgresql/bin/$b"
done
# What initdb loads: PL/pgSQL and the snowball dictionaries; the
# encoding conversions for clients that ask for them. Not llvmjit.
for so in "$pg"/lib/*.so; do
	case "$(basename "$so")" in llvmjit*) continue ;; esac
	cp -L "$so" "$out/usr/lib/postgresql/$v/lib/"
done
mkdir -p "$out/usr/share/postgresql"
cp -RL "/usr/share/postgresql/$v" "$out/usr/share/postgresql/$v"
rm -rf "$out/usr/share/postgresql/$v/man" "$out/usr/share/postgresql/$v/contrib"
cp -L /usr/share/zoneinfo/UTC "$out/usr/share/zoneinfo/UTC"
cp -L /usr/share/zoneinfo/UTC "$out/usr/share/zoneinfo/Etc/UTC"
cp -L /bin/dash "$out/bin/sh"
ldd "$out/usr/lib/postgresql/$v/bin/"* "$out/usr/lib/postgresql/$v/lib/"*.so /bin/dash 2>/dev/null |
	awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && NF == 2 {print $1}' | sort -u |
	while read -r lib; do
		mkdir -p "$out$(dirname "$lib")"
		cp -L "$lib" "$out$lib"
	done
printf 'root:x:0:0:root:/:/bin/sh\npostgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh\n' >"$out/etc/passwd"
printf 'root:x:0:\npostgres:x:999:\n' >"$out/etc/group"
cp "$here/entrypoint.sh" "$out/entrypoint.sh"
chmod 0700 "$home/data"
chmod 1777 "$out/tmp"
echo "$v"
