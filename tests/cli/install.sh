#!/usr/bin/env bash
# End-to-end: `cmake --install` into a scratch prefix puts the binary, its manual page and its bash and zsh
# completions there; the page renders (man -l, else groff, else its roff text is checked) and names every command;
# the completions list every command `fusecheck help` lists, and a command's subcommands and options.
. "$(dirname "$0")/lib.bash" "$1"
build=$(dirname "$fc")
prefix="$tmp/prefix"
expect 0 "cmake --install" -- cmake --install "$build" --prefix "$prefix"
bin="$prefix/bin/fusecheck" page="$prefix/share/man/man1/fusecheck.1"
bashc="$prefix/share/bash-completion/completions/fusecheck" zshc="$prefix/share/zsh/site-functions/_fusecheck"
for f in "$bin" "$page" "$bashc" "$zshc"; do
  [ -s "$f" ] && ok || bad "not installed: $f"
done
expect 0 "the installed binary runs" -- "$bin" --version
contains "$tmp/out" "fusecheck " "its version"

# every command, as `fusecheck help` lists them
"$fc" help | awk '/^usage:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ && n++ { exit }' > "$tmp/commands"
[ "$(wc -l < "$tmp/commands")" -ge 20 ] && ok || bad "help lists $(wc -l < "$tmp/commands") commands"

# ── The manual page ──────────────────────────────────────────────────────────────────────────────────────────────
if command -v man >/dev/null; then
  MANWIDTH=120 man -l "$page" 2>"$tmp/manerr" | col -b > "$tmp/man.txt"
  renderer="man -l"
elif command -v groff >/dev/null; then
  groff -man -Tutf8 "$page" 2>"$tmp/manerr" | col -b > "$tmp/man.txt"
  renderer="groff"
else
  sed 's/\\-/-/g; s/\\e/\\/g' "$page" > "$tmp/man.txt"; : > "$tmp/manerr"
  renderer="its roff text"
fi
[ ! -s "$tmp/manerr" ] && ok || bad "$renderer warns: $(head -3 "$tmp/manerr")"
contains "$tmp/man.txt" "FUSECHECK(1)" "the page's title" 2>/dev/null || true
grep -q "^NAME" "$tmp/man.txt" && grep -q "^COMMANDS" "$tmp/man.txt" && ok || bad "the page has no NAME or COMMANDS section"
while read -r c; do
  grep -qE "^   $c\$|^       fusecheck $c( |\$)" "$tmp/man.txt" && ok || bad "the page ($renderer) lacks command $c"
done < "$tmp/commands"
contains "$tmp/man.txt" "--limit N" "db diff's --limit on the page"
contains "$tmp/man.txt" "print at most N raw changes" "and what it means, from the same text as help"
if command -v groff >/dev/null; then
  groff -man -ww -z "$page" 2>"$tmp/warn"
  [ ! -s "$tmp/warn" ] && ok || bad "groff -ww warns: $(head -3 "$tmp/warn")"
fi

# ── bash ─────────────────────────────────────────────────────────────────────────────────────────────────────────
complete_bash() { # WORDS...: what the completion offers for the last word
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fusecheck; printf "%s\n" "${COMPREPLY[@]}"' \
    sh "$bashc" "$@"
}
complete_bash fusecheck "" | sort > "$tmp/bash_commands"
sort "$tmp/commands" | cmp -s - "$tmp/bash_commands" && ok ||
  bad "bash completes other commands than help lists: $(sort "$tmp/commands" | diff - "$tmp/bash_commands" | head -5)"
[ "$(complete_bash fusecheck db "" | tr '\n' ' ')" = "runs diff merge " ] && ok ||
  bad "bash: db's subcommands: $(complete_bash fusecheck db "" | tr '\n' ' ')"
[ "$(complete_bash fusecheck db diff --li)" = "--limit" ] && ok || bad "bash: db diff --li does not complete to --limit"
complete_bash fusecheck check --sh | grep -qx -- "--shim" && ok || bad "bash: check --sh does not offer --shim"
[ "$(complete_bash fusecheck help che | tr '\n' ' ')" = "check " ] && ok || bad "bash: help che does not offer check"

# ── zsh ──────────────────────────────────────────────────────────────────────────────────────────────────────────
head -1 "$zshc" | grep -qx "#compdef fusecheck" && ok || bad "the zsh script does not start #compdef fusecheck"
while read -r c; do
  grep -q "^        '$c:" "$zshc" && grep -q "^        $c) opts=" "$zshc" && ok || bad "zsh completion lacks command $c"
done < "$tmp/commands"
if command -v zsh >/dev/null; then
  zsh -n "$zshc" && ok || bad "zsh -n: the script does not parse"
fi
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
