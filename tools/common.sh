# tools/common.sh - shared by tools/run and tools/test (sourced, not run).
# Installs missing Debian packages, generates the build system and builds
# an out-of-tree build directory. Idempotent and quick when nothing changed.

VS_PACKAGES="gcc make autoconf automake pkg-config libevent-dev libxxhash-dev
libmsgpack-dev libjemalloc-dev check libsubunit-dev libsodium-dev libinih-dev
libssl-dev openssl libsystemd-dev clang-format clang"

vs_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

vs_say() { printf '==> %s\n' "$*" >&2; }

vs_install_deps() {
    local missing=() p
    for p in $VS_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    vs_say "installing Debian packages: ${missing[*]}"
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# Regenerates configure when it is missing or older than its inputs.
vs_autoreconf() {
    cd "$vs_root"
    local stale=0 f
    [ -x configure ] && [ -f Makefile.in ] || stale=1
    if [ $stale -eq 0 ]; then
        for f in configure.ac Makefile.am $(find . -name local.mk -not -path './build*'); do
            [ "$f" -nt configure ] && stale=1 && break
        done
    fi
    if [ $stale -eq 1 ]; then
        vs_say "autoreconf"
        autoreconf -fi >/dev/null
    fi
}

# vs_build DIR [configure flags...]: configure (once) and make in DIR.
vs_build() {
    local dir=$1
    shift
    mkdir -p "$vs_root/$dir"
    cd "$vs_root/$dir"
    if [ ! -f Makefile ] || [ ! -f config.status ] || [ "$vs_root/configure" -nt config.status ]; then
        vs_say "configure $dir $*"
        "$vs_root/configure" -q "$@" >/dev/null
    fi
    vs_say "make ($dir)"
    make -j"$(nproc)" >/dev/null
}
