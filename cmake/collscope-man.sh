#!/bin/sh
# Writes the collscope(1) man page from the built commands' --help (the options have one description, the
# one --help prints). Usage: collscope-man.sh COLLSCOPE OUTPUT.1.gz VERSION
set -eu
exe=$1 out=$2 version=$3
# roff: backslashes and minus signs escaped, a line starting with . or ' kept as text.
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"; }
commands_of() { "$exe" "$@" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }'; }
section() {
  echo ".SS collscope $*"
  echo ".nf"
  "$exe" "$@" --help 2>&1 | esc || true
  echo ".fi"
}
mkdir -p "$(dirname "$out")"
{
  echo ".TH COLLSCOPE 1 \"\" \"collscope $version\" \"User Commands\""
  echo ".SH NAME"
  printf '%s\n' 'collscope \- find out why a multi\-GPU/MPI training job is slow, and tune it'
  echo ".SH SYNOPSIS"
  echo ".B collscope"
  echo ".I COMMAND"
  printf '%s\n' '[\fIOPTIONS\fR] [\fIARGS\fR]'
  echo ".SH DESCRIPTION"
  echo ".nf"
  "$exe" --help | esc
  echo ".fi"
  echo ".SH COMMANDS"
  for c in $(commands_of); do
    section "$c"
    for s in $(commands_of "$c"); do section "$c" "$s"; done
  done
  echo ".SH EXIT STATUS"
  echo "0 success; 1 a comparison found a regression (compare) or every trial failed (tune); 2 a usage or input"
  echo "error, said in one line on stderr. trace exits with the traced job's code."
  echo ".SH SEE ALSO"
  echo "The README and docs/ in the documentation directory (/usr/share/doc/collscope for the Debian package)."
} | gzip -9n >"$out.tmp"
mv "$out.tmp" "$out"
