#!/usr/bin/env bash
# The Dockerfile's runtime stage installs the package of every shared
# library the fracpack binary links (a slim image lacks them otherwise),
# and its build stage the -dev packages .ci/install-deps installs for the
# binary. Usage: dockerfile_test.sh SOURCE_DIR FRACPACK_BINARY
set -euo pipefail
src="$1"; binary="$2"
dockerfile="$src/Dockerfile"
runtime=$(awk '/^FROM debian:12-slim/{r=1} r' "$dockerfile")
build=$(awk '/^FROM debian:12 AS build/{b=1} /^FROM debian:12-slim/{b=0} b' "$dockerfile")
fail=0
# In debian:12-slim already: libc6, libgcc-s1, libstdc++6.
for lib in $(ldd "$binary" | awk '/=>/{print $3}'); do
  # Debian 12 merges /lib into /usr/lib: dpkg knows one of the two paths.
  pkg=$( (dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null) | head -1 | cut -d: -f1) || true
  [ -z "$pkg" ] && { echo "no Debian package owns $lib"; fail=1; continue; }
  case "$pkg" in libc6|libgcc-s1|libstdc++6) continue ;; esac
  grep -qw -- "$pkg" <<<"$runtime" || { echo "runtime stage lacks $pkg (for $(basename "$lib"))"; fail=1; }
done
for dev in libboost1.81-dev nlohmann-json3-dev libyaml-cpp-dev prometheus-cpp-dev libssl-dev libsimdjson-dev; do
  grep -qw -- "$dev" "$src/.ci/install-deps" || { echo ".ci/install-deps no longer installs $dev: update this check"; fail=1; }
  grep -qw -- "$dev" <<<"$build" || { echo "build stage lacks $dev"; fail=1; }
done
grep -q '^USER 65532' <<<"$runtime" || { echo "the runtime stage must not run as root"; fail=1; }
[ "$fail" -eq 0 ] && echo "Dockerfile: runtime and build packages agree with the binary"
exit "$fail"
