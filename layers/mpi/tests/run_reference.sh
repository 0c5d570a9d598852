#!/usr/bin/env bash
# Validate the MPI test programs (and examples/mpi/stencil.c) against the two
# reference MPI implementations, Open MPI and MPICH, before they are used to
# judge librocl_mpi.
#
#   layers/mpi/tests/run_reference.sh [-k] [-n "1 2 3 4"] [-m "openmpi mpich"] [prog...]
#
#   -k   keep going quietly (default prints the output of failing runs)
#   -n   process counts (default "1 2 3 4")
#   -m   MPIs to use (default "openmpi mpich"; "rocl" = rocl-mpicc/roclrun
#        from $ROCL_BUILD, default <root>/build)
#   prog program names without .c (default: every *.c in this folder)
#
# Build folder: $BUILD_DIR (default: a fresh temporary folder, removed at the
# end unless KEEP_BUILD=1). Exit status is non-zero if anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
stencil_src="$root/examples/mpi/stencil.c"

nps="1 2 3 4"
mpis="openmpi mpich"
quiet=0
while getopts "kn:m:" opt; do
    case $opt in
    k) quiet=1 ;;
    n) nps=$OPTARG ;;
    m) mpis=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

if [ $# -gt 0 ]; then
    progs="$*"
else
    progs=$(cd "$here" && ls *.c | sed 's/\.c$//' | sort)
fi
# Build variants "binary:source:extra flags". errors.c is rocl-specific and
# skips itself elsewhere; errors_anympi runs its portable part anyway.
variants=""
for p in $progs; do
    variants+="$p:$p: "
    [ "$p" = errors ] && variants+="errors_anympi:errors:-DERRORS_TEST_ANY_MPI "
done

if [ -n "${BUILD_DIR:-}" ]; then
    build=$BUILD_DIR
    mkdir -p "$build"
else
    build=$(mktemp -d /tmp/rocl_mpi_ref.XXXXXX)
    [ "${KEEP_BUILD:-0}" = 1 ] || trap 'rm -rf "$build"' EXIT
fi

CFLAGS="-std=c11 -Wall -Wextra -O1 -g"
TIMEOUT=${TIMEOUT:-60}

# -m rocl runs the same programs on rocl's MPI from a build folder
# ($ROCL_BUILD, default <root>/build): its rocl-mpicc and roclrun.
ROCL_BUILD=${ROCL_BUILD:-$root/build}

compiler() { # mpi -> compiler command
    case $1 in
    rocl) echo "$ROCL_BUILD/layers/mpi/rocl-mpicc" ;;
    *) echo "mpicc.$1" ;;
    esac
}

launcher() { # mpi np program -> command prefix
    case $1 in
    # Processes that MPI_Comm_spawn starts are another job: shared memory
    # does not reach them, tcp does. Open MPI's osc/rdma takes no window of
    # a single process over btl self: rma alone uses osc sm and pt2pt.
    openmpi) echo "mpirun.openmpi --allow-run-as-root --oversubscribe -np $2 --mca pml ob1 --mca btl self,vader$(case $3 in spawn*) echo ,tcp ;; esac)$([ "$3" = rma ] && [ "$2" = 1 ] && echo " --mca osc sm,pt2pt")" ;;
    mpich) echo "mpiexec.mpich -n $2" ;;
    rocl) echo "$ROCL_BUILD/tools/roclrun/roclrun --no-prefix -n $2" ;;
    esac
}

fails=0
summary=""
record() { # label result
    summary+=$(printf '%-28s %s' "$1" "$2")$'\n'
    printf '%-28s %s\n' "$1" "$2"
}

for mpi in $mpis; do
    cc=$(compiler "$mpi")
    if ! command -v "$cc" >/dev/null; then
        record "$mpi" "MISSING ($cc not found)"
        fails=$((fails + 1))
        continue
    fi
    mkdir -p "$build/$mpi"
    # Build.
    for v in $variants; do
        IFS=: read -r p src extra <<<"$v"
        blog="$build/$mpi/$p.build.log"
        rm -f "$build/$mpi/$p"
        # Compile and link separately: the programs must compile without a
        # warning (-Wall -Wextra), while what a link step reports (e.g. from
        # a library's link-time optimisation) is not about the program.
        if ! $cc $CFLAGS $extra -c -o "$build/$mpi/$p.o" "$here/$src.c" >"$blog" 2>&1; then
            record "$mpi/$p build" "FAIL"
            cat "$blog"
            fails=$((fails + 1))
            continue
        elif [ -s "$blog" ]; then
            record "$mpi/$p build" "FAIL (warnings)"
            cat "$blog"
            fails=$((fails + 1))
        fi
        if ! $cc $CFLAGS -o "$build/$mpi/$p" "$build/$mpi/$p.o" -lpthread -lm >"$blog.link" 2>&1; then
            record "$mpi/$p link" "FAIL"
            cat "$blog.link"
            fails=$((fails + 1))
        fi
    done
    # Run.
    for v in $variants; do
        IFS=: read -r p src extra <<<"$v"
        [ -x "$build/$mpi/$p" ] || continue
        for np in $nps; do
            log="$build/$mpi/$p.np$np.log"
            t0=$(date +%s%N)
            # MPICH 4.0.2's hydra fails every MPI_Comm_spawn here ("Error in
            # spawn call"): the spawn tests are checked against Open MPI.
            if [ "$mpi" = mpich ] && [[ $src == spawn* ]]; then
                record "$mpi/$p np$np" "skipped (this MPICH cannot spawn here)"
                continue
            fi
            timeout -k 5 "$TIMEOUT" $(launcher "$mpi" "$np" "$src") "$build/$mpi/$p" >"$log" 2>&1
            rc=$?
            ms=$((($(date +%s%N) - t0) / 1000000))
            t="$((ms / 1000)).$(((ms % 1000) / 100))"
            if [ $rc -eq 0 ] && grep -Eq "^$src: (OK|skipped)" "$log" &&
                ! grep -q "FAILED" "$log"; then
                record "$mpi/$p np$np" "$(printf 'pass %5.1fs' "$t")"
            else
                record "$mpi/$p np$np" "$(printf 'FAIL %5.1fs rc=%d' "$t" "$rc")"
                [ $quiet = 1 ] || sed 's/^/    | /' "$log" | tail -n 30
                fails=$((fails + 1))
            fi
        done
    done
    # The outside program: its output must not depend on the rank count or MPI.
    if [ -f "$stencil_src" ] && [ $# -eq 0 ]; then
        if $cc $CFLAGS -o "$build/$mpi/stencil" "$stencil_src" -lm >"$build/$mpi/stencil.build.log" 2>&1 &&
            [ ! -s "$build/$mpi/stencil.build.log" ]; then
            for np in $nps; do
                out="$build/$mpi/stencil.np$np.out"
                if timeout -k 5 "$TIMEOUT" $(launcher "$mpi" "$np") "$build/$mpi/stencil" -n 200 -m 150 -i 100 \
                    >"$out" 2>"$build/$mpi/stencil.np$np.err"; then
                    ref="$build/stencil.reference.out"
                    [ -f "$ref" ] || cp "$out" "$ref"
                    if cmp -s "$out" "$ref"; then
                        record "$mpi/stencil np$np" "pass (output identical)"
                    else
                        record "$mpi/stencil np$np" "FAIL (output differs)"
                        diff "$ref" "$out" | head -n 10
                        fails=$((fails + 1))
                    fi
                else
                    record "$mpi/stencil np$np" "FAIL (rc)"
                    tail -n 20 "$build/$mpi/stencil.np$np.err"
                    fails=$((fails + 1))
                fi
            done
        else
            record "$mpi/stencil build" "FAIL"
            cat "$build/$mpi/stencil.build.log"
            fails=$((fails + 1))
        fi
    fi
done

echo "----"
if [ $fails -eq 0 ]; then
    echo "run_reference: all passed"
else
    echo "run_reference: $fails failure(s)"
fi
[ $fails -eq 0 ]
