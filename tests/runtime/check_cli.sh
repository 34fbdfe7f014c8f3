#!/usr/bin/env bash
# Runs a command line and checks its exit code and that its output (stdout
# and stderr) contains a fixed string:
#   check_cli.sh EXIT_CODE TEXT COMMAND [ARG ...]
set -u
want_code=$1 want_text=$2
shift 2
out=$("$@" 2>&1)
code=$?
if [ "$code" -ne "$want_code" ]; then
  printf 'exit code %s, expected %s; output:\n%s\n' "$code" "$want_code" "$out" >&2
  exit 1
fi
if ! grep -qF -- "$want_text" <<<"$out"; then
  printf 'output lacks "%s":\n%s\n' "$want_text" "$out" >&2
  exit 1
fi
