# bench/lib.sh - shared by the shell benchmarks.
# measure NAME CMD... : $reps runs of CMD; prints the median wall time and the
# largest peak RSS (GNU time), the name padded to ${width:-10}.  Needs $out (a
# scratch folder) and $reps; the command's output is left in $out/NAME.out.
[ -x /usr/bin/time ] || { echo "GNU time not found: apt-get install time"; exit 2; }
measure() {
	name=$1; shift
	: > "$out/times"
	i=0
	while [ $i -lt "$reps" ]; do
		/usr/bin/time -f '%e %M' -o "$out/one" "$@" > "$out/$name.out" 2>&1 || {
			echo "$name failed:"; tail -5 "$out/$name.out"; exit 1; }
		cat "$out/one" >> "$out/times"
		i=$((i + 1))
	done
	sort -n "$out/times" | awk -v name="$name" -v n="$reps" -v w="${width:-10}" '
		{ t[NR] = $1; if ($2 > m) m = $2 }
		END { printf "%-" w "s median %.3f s  (min %.3f, max %.3f)  peak RSS %.1f MiB\n",
			name, t[int((n + 1) / 2)], t[1], t[n], m / 1024 }'
}
