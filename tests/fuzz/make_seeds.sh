#!/usr/bin/env bash
# Seeds made at run time rather than committed (binaries): tools/scripts/fuzz.sh calls it with
# the corpus directory. Existing files are kept; a missing tool (gcc, objcopy, xz) only means
# fewer seeds.
#
# - jfr_chunks: the golden recordings.
# - symbolize_pipeline: the golden recordings behind a filter byte (0: none, 0x3f: all).
# - merge: pairs of golden recordings, the first made the JDK's (its jdk.NativeStackTrace
#   renamed, the same length), behind the 4-byte length of the first.
# - elf_reader: the symbolizer's test library (testdata/symbolize/sym.c) with DWARF, with
#   compressed DWARF, stripped, with MiniDebugInfo, the xz stream alone, and the system's libz.
# - memory_image: the system's libz as a library's memory (its first segments are laid out as
#   in the file).
# - corpus/libs: libraries the symbolizer finds by file name (JFR_FUZZ_LIBS).
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus=${1:?usage: make_seeds.sh CORPUS_DIR}
golden=testdata/golden

python3 - "$golden" "$corpus" <<'EOF'
import os, struct, sys
golden, corpus = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(golden) if f.endswith('.jfr'))
read = lambda f: open(os.path.join(golden, f), 'rb').read()
def put(target, name, data):
    path = os.path.join(corpus, target, name)
    if not os.path.exists(path):
        open(path, 'wb').write(data)
jdk = lambda b: b.replace(b'jdk.NativeStackTrace', b'jdk.NativeStackTracX')
for f in files:
    b = read(f)
    put('jfr_chunks', f, b)
    put('symbolize_pipeline', f, b'\x00' + b)
    put('symbolize_pipeline', 'all-' + f, b'\x3f' + b)
for a, b in [('single_chunk.jfr', 'single_chunk.jfr'), ('two_chunks.jfr', 'lost_samples.jfr'),
             ('report_totals.jfr', 'single_chunk_inline.jfr')]:
    first = jdk(read(a))
    put('merge', a[:-4] + '+' + b[:-4], struct.pack('<I', len(first)) + first + read(b))
EOF

work=$corpus/elf-work
mkdir -p "$work" "$corpus/libs"
if [[ -e /usr/lib/x86_64-linux-gnu/libz.so.1 ]]; then
    cp -nL /usr/lib/x86_64-linux-gnu/libz.so.1 "$corpus/memory_image/libz.so.1"
    cp -nL /usr/lib/x86_64-linux-gnu/libz.so.1 "$corpus/elf_reader/libz.so.1"
    cp -nL /usr/lib/x86_64-linux-gnu/libz.so.1 "$corpus/libs/libz.so.1"
fi
if command -v gcc >/dev/null && command -v objcopy >/dev/null && command -v xz >/dev/null &&
    [[ ! -e $corpus/elf_reader/libsym-mini.so ]]; then
    gcc -shared -fPIC -O1 -g -Wl,--build-id -o "$work/libsym.so" testdata/symbolize/sym.c
    objcopy --compress-debug-sections=zlib "$work/libsym.so" "$work/libsym-zlib.so"
    strip -o "$work/libsym-stripped.so" "$work/libsym.so"
    objcopy -S --remove-section .gdb_index --remove-section .comment "$work/libsym.so" "$work/mini"
    xz -f "$work/mini"
    objcopy --add-section=.gnu_debugdata="$work/mini.xz" "$work/libsym-stripped.so" \
        "$work/libsym-mini.so"
    cp "$work/libsym.so" "$work/libsym-zlib.so" "$work/libsym-stripped.so" "$work/libsym-mini.so" \
        "$work/mini.xz" "$corpus/elf_reader/"
    cp "$work/libsym.so" "$corpus/libs/"
fi
rm -rf "$work"
