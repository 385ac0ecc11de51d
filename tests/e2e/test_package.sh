#!/usr/bin/env bash
# Install and package: `cmake --install` puts the binary, the man page and the
# three completions where each ecosystem looks; CPack builds a .deb from the
# same build tree, which lists them (dpkg-deb -c), depends on nothing (the
# binary is static), recommends only packages of scripts/packages.sh, and, extracted into a temp folder (dpkg-deb -x), runs:
# --version, a `simba run` on a temp SQLite database, its man page.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

# The build tree: CMake passes it; else the one holding the binary.
build=${SIMBA_BUILD_DIR:-$(dirname -- "$SIMBA")}
[[ -f $build/CMakeCache.txt ]] || fail "no CMake build tree at $build (set SIMBA_BUILD_DIR)"
[[ -f $build/CPackConfig.cmake ]] || fail "no CPackConfig.cmake in $build: CMakeLists.txt lacks include(CPack)"
needs cmake cpack dpkg-deb groff python3

files=(
  bin/simba
  share/man/man1/simba.1
  share/bash-completion/completions/simba
  share/zsh/vendor-completions/_simba
  share/fish/vendor_completions.d/simba.fish
)

# cmake --install into a prefix of our own.
cmake --install "$build" --prefix "$T/prefix" >"$T/install.log" 2>&1 ||
  fail "cmake --install failed: $(cat -- "$T/install.log")"
for f in "${files[@]}"; do
  [[ -f $T/prefix/$f ]] || fail "cmake --install did not install $f"
done
[[ -x $T/prefix/bin/simba ]] || fail "the installed simba is not executable"

# The .deb, built into a temp dir (the build tree's own files stay as they are).
(cd -- "$T" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$T/pkg") >"$T/cpack.log" 2>&1 ||
  fail "cpack failed: $(cat -- "$T/cpack.log")"
debs=("$T"/pkg/*.deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || fail "expected one .deb in $T/pkg: $(ls -- "$T/pkg")"
deb=${debs[0]}

dpkg-deb -c "$deb" >"$T/contents" || fail "dpkg-deb -c failed"
for f in "${files[@]}"; do
  grep -qE "[[:space:]]\./usr/$f\$" "$T/contents" ||
    fail "the package lacks /usr/$f: $(cat -- "$T/contents")"
done
grep -qE '^-rwxr-xr-x root/root .* \./usr/bin/simba$' "$T/contents" ||
  fail "/usr/bin/simba is not an executable owned by root: $(grep simba$ "$T/contents")"

version=$("$SIMBA" --version | sed -n 's/^simba \([0-9.]*\) .*/\1/p')
assert_eq simba "$(dpkg-deb -f "$deb" Package)" "Package"
assert_eq "$version" "$(dpkg-deb -f "$deb" Version)" "Version"
[[ -n $(dpkg-deb -f "$deb" Maintainer) ]] || fail "no Maintainer"
[[ -n $(dpkg-deb -f "$deb" Description) ]] || fail "no Description"
static=$(sed -n 's/^SIMBA_STATIC:BOOL=//p' "$build/CMakeCache.txt")
if [[ $static == ON ]]; then
  assert_eq "" "$(dpkg-deb -f "$deb" Depends)" "Depends of a package with a static binary"
fi
assert_eq "" "$(dpkg-deb -f "$deb" Recommends)" "Recommends (OpenSSL is linked in)"
# What the .deb asks for is what scripts/packages.sh installs (and so what
# the tests ran with).
python3 "$_e2e_root/tests/build/check_packages.py" --deb "$deb" "$_e2e_root" 2>"$T/deb-deps" ||
  fail "the .deb's dependencies: $(cat -- "$T/deb-deps")"

# Extracted, it runs from there.
dpkg-deb -x "$deb" "$T/root" || fail "dpkg-deb -x failed"
bin=$T/root/usr/bin/simba
assert_exit 0 "$bin" --version
assert_eq "$("$SIMBA" --version)" "$(<"$T/out")" "--version of the packaged binary"
if [[ $static == ON ]] && command -v ldd >/dev/null 2>&1; then
  ldd "$bin" >"$T/ldd" 2>&1 || true
  # "statically linked" or "not a dynamic executable", as ldd's version says.
  grep -Eq 'not a dynamic executable|statically linked' "$T/ldd" || fail "the packaged simba is not static: $(cat -- "$T/ldd")"
fi
assert_exit 0 "$bin" run --backend "sqlite:$T/pkg.db" --mutex pkg -- sh -c 'echo "token=$SIMBA_FENCING_TOKEN"'
grep -qE '^token=[1-9][0-9]*$' "$T/out" || fail "CMD of the packaged simba: $(cat -- "$T/out")"

# Its man page renders.
page=$T/root/usr/share/man/man1/simba.1
if command -v man >/dev/null 2>&1; then
  MANPAGER=cat MANWIDTH=80 man -l "$page" >"$T/man.txt" 2>"$T/man.err" ||
    fail "man -l failed: $(cat -- "$T/man.err")"
else
  groff -man -Tutf8 "$page" >"$T/man.txt" || fail "groff failed on $page"
fi
grep -q 'SYNOPSIS' "$T/man.txt" || fail "the packaged man page has no SYNOPSIS"
grep -q 'simba run' "$T/man.txt" || fail "the packaged man page does not show 'simba run'"

# Its bash completion loads.
bash --norc --noprofile -c 'source "$1" && complete -p simba' bash \
  "$T/root/usr/share/bash-completion/completions/simba" >"$T/complete" 2>&1 ||
  fail "the packaged bash completion does not load: $(cat -- "$T/complete")"
