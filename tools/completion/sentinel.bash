# bash completion for rulec and sentinelctl (make install puts it in
# DATADIR/bash-completion/completions, under both names).
#   rulec: options, rule files and directories, --list-metrics' formats,
#          --emit's kinds, --color's, `test` and its options
#   sentinelctl: commands, options, sentinel.conf files for -c

_sentinel_rulec()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $cur in
	--list-metrics=*) COMPREPLY=($(compgen -P --list-metrics= -W "text markdown json" -- "${cur#*=}")); return ;;
	--emit=*) COMPREPLY=($(compgen -P --emit= -W "llvm llvm-opt llvm-host ptx manifest llview-stats" -- "${cur#*=}")); return ;;
	--format=*) COMPREPLY=($(compgen -P --format= -W "text json" -- "${cur#*=}")); return ;;
	--color=*) COMPREPLY=($(compgen -P --color= -W "auto always never" -- "${cur#*=}")); return ;;
	esac
	case $prev in
	-o|--junit|--kallsyms|--btf|--replay) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--target) COMPREPLY=($(compgen -W "ramfile: vmcore: raw: pmem kcore qemu: libvirt:" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
	--run) return ;;
	esac
	if [ "$COMP_CWORD" -eq 1 ] && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -W "test" -- "$cur") $(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		local opts="--check -o --emit= --gpu-arch= -O2 --all-metrics --verbose --target --kallsyms --btf
			--format= --tick= --max-errors= --Werror --color= --quiet --list-metrics --list-metrics=
			--list-functions --list-diagnostics --help --version"
		[ "${COMP_WORDS[1]}" = test ] && opts="--run --junit -v --replay"
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		case ${COMPREPLY[0]} in *=) compopt -o nospace 2>/dev/null ;; esac
		return
	fi
	COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur"))
}

_sentinel_sentinelctl()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-c|--config) COMPREPLY=($(compgen -f -X '!*.conf' -- "$cur") $(compgen -d -- "$cur")); return ;;
	-t|--timeout) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--socket --config --timeout --json --help --version" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -W "status rules alerts reload" -- "$cur"))
}

shopt -s extglob 2>/dev/null
complete -F _sentinel_rulec -o filenames rulec
complete -F _sentinel_sentinelctl -o filenames sentinelctl
