#!/usr/bin/env bash
# Quick source checks, run by scripts/test.sh as the "lint" stage (a few seconds):
#
#   citations  a comment in a C++, CMake or shell file that names one of our source files
#              (<name>.cpp, .hpp, .cu or .cuh, parasim/<component>/<name>.hpp, <dir>/<name>.cpp) names a file
#              that exists, so comments do not point at code that moved or was renamed
#   columns    no line of our C++ sources (reproductions/ excepted) is over 120 columns
#   format     lines added since BASE follow .clang-format (clang-format-diff) and are at most
#              120 columns. BASE is $PARASIM_LINT_BASE, else the merge base with main; on main
#              itself nothing is added, so only a branch's own lines are checked and code nobody
#              touches is never reformatted for the check's sake.
#
# Exit status 1 when a check fails; every finding is printed as file:line: message.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=0

# ------------------------------------------------------------------ citations
tracked=$(git ls-files)
names=$(printf '%s\n' "$tracked" | sed 's#.*/##' | sort -u)
sources=$(printf '%s\n' "$tracked" | grep -E '\.(cpp|hpp|cu|cuh)$|CMakeLists\.txt$|\.cmake$|\.sh$' | grep -v '^reproductions/')
stale=0
while IFS=: read -r file line cited; do
  [ -z "$cited" ] && continue
  case "$cited" in
    parasim/*) grep -q "include/$cited\$" <<<"$tracked" && continue ;;
    */*) grep -qE "(^|/)${cited//./\\.}\$" <<<"$tracked" && continue ;;
    *) grep -qxF "$cited" <<<"$names" && continue ;;
  esac
  echo "$file:$line: comment names $cited, which does not exist"
  stale=$((stale + 1))
done < <(
  # The comment part of each line (after // in C++, # elsewhere), then every word ending in one
  # of our source extensions that is not part of a glob (cuda_*_kernels.cu) or a longer word.
  # shellcheck disable=SC2086
  awk '
    FNR == 1 { m = (FILENAME ~ /\.(cpp|hpp|cu|cuh)$/) ? "//" : "#" }
    {
      i = index($0, m); if (i == 0) next
      t = " " substr($0, i)
      while (match(t, /[^*A-Za-z0-9_.\/-][A-Za-z0-9_.\/-]*[A-Za-z0-9_-]+\.(cpp|hpp|cuh|cu)([^A-Za-z0-9_]|$)/)) {
        c = substr(t, RSTART + 1, RLENGTH - 1); sub(/[^A-Za-z0-9_]$/, "", c); sub(/^\.\//, "", c)
        print FILENAME ":" FNR ":" c
        t = substr(t, RSTART + RLENGTH - 1)
      }
    }' $sources
)
if [ "$stale" -ne 0 ]; then failed=1; fi
echo "lint: citations: $stale stale"

# ------------------------------------------------------------------ columns, tree-wide
# shellcheck disable=SC2086
wide=$(awk 'length($0) > 120 { print FILENAME ":" FNR ": " length($0) " columns (at most 120)" }' \
  $(printf '%s\n' "$tracked" | grep -E '\.(cpp|hpp|cu|cuh|h)$' | grep -v '^reproductions/'))
if [ -n "$wide" ]; then printf '%s\n' "$wide"; failed=1; fi
echo "lint: columns: $(printf '%s' "$wide" | grep -c . || true) lines over 120"

# ------------------------------------------------------------------ format of added lines
base=${PARASIM_LINT_BASE:-$(git merge-base HEAD main 2>/dev/null || true)}
if [ -z "$base" ]; then
  echo "lint: format: no main branch and no PARASIM_LINT_BASE; skipped"
else
  paths=(':(glob)**/*.cpp' ':(glob)**/*.hpp' ':(glob)**/*.cu' ':(glob)**/*.cuh' ':(exclude)reproductions/**')
  fmt=$(git diff -M -U0 --no-color "$base" -- "${paths[@]}" | clang-format-diff -p1 -style=file 2>&1)
  if [ -n "$fmt" ]; then
    printf '%s\n' "$fmt"
    echo "lint: format: lines added since ${base:0:12} differ from .clang-format (above)"
    failed=1
  fi
  long=$(git diff -M -U0 --no-color "$base" -- "${paths[@]}" |
    awk '/^\+\+\+ b\// { f = substr($0, 7) } /^@@/ { split($3, a, ","); n = substr(a[1], 2) - 1 }
         /^\+[^+]/ || /^\+$/ { n++; if (length($0) - 1 > 120) print f ":" n ": " length($0) - 1 " columns (at most 120)" }')
  if [ -n "$long" ]; then printf '%s\n' "$long"; failed=1; fi
  echo "lint: format: lines added since ${base:0:12} checked"
fi
exit "$failed"
