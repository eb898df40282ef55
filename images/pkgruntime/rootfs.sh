#!/bin/sh
# rootfs.sh DIR: DIR/node and DIR/python, two Debian roots made from one
# debootstrap --variant=minbase of this host's release, from this host's own
# Debian mirror, with apt-get run inside each (chroot, /proc mounted:
# debootstrap's --include cannot resolve npm's dependency cycles):
#   node:   nodejs npm                (the npx runtime of the tests)
#   python: python3-pip python3-venv  (the uvx/python runtime: pip in a venv, no uv)
# Documentation, manuals, locales and TypeScript declarations are dropped:
# building a package image on an engine whose storage driver diffs naively
# (fuse-overlayfs) walks every file of the runtime image.
# Prints the versions it installed. Needs root and debootstrap.
set -eu
out="$1"
if ! command -v debootstrap >/dev/null 2>&1; then
	echo "rootfs.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
fi
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
# The host's mirror: the first URIs line of a deb822 source that is not the
# security archive, else the first "deb" line of sources.list.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}')
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" && $2 !~ /^\[/ && $2 !~ /security/ {print $2; exit}')
fi
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$out"
mkdir -p "$out"
debootstrap --variant=minbase "$suite" "$out/base" "$mirror" >&2
install_into() { # root packages…
	root=$1
	shift
	mount -t proc proc "$root/proc"
	trap 'umount "$root/proc" 2>/dev/null || true' EXIT
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	chroot "$root" apt-get update -qq >&2
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
	chroot "$root" apt-get clean
	umount "$root/proc"
	trap - EXIT
	rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/log/"* \
		"$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/locale" "$root/usr/share/lintian"
	: >"$root/etc/resolv.conf"
	if [ -d "$root/usr/share/nodejs" ]; then
		find "$root/usr/share/nodejs" -type f \( -name '*.d.ts' -o -name '*.map' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete
	fi
}
cp -a "$out/base" "$out/node"
mv "$out/base" "$out/python"
install_into "$out/node" nodejs npm
install_into "$out/python" python3-pip python3-venv
echo "node=$(chroot "$out/node" node --version) npm=$(chroot "$out/node" npm --version 2>/dev/null) python=$(chroot "$out/python" python3 --version | cut -d' ' -f2) ($suite)"
