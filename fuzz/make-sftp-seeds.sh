#!/bin/sh
# SPDX-License-Identifier: ISC
# Records the seed corpora of the SFTP fuzzers from real servers:
#   fuzz/corpus/fuzz_sftp/*        a chunk byte, then every byte a server sent
#                                  while the fuzz_sftp driver ran against it
#   fuzz/corpus/fuzz_sftp_names/*  the NAME bodies (count + entries) in them
# Builds sftp_seed_record (the fuzz_sftp driver over pipes, no fuzzer) in the
# fuzz build directory. Servers: OpenSSH's sftp-server, and gesftpserver when
# installed. Scenarios: a folder with a 1100-byte file.jpg and a dir/ of a few
# entries (odd names, a subfolder, a symlink, an empty file), a dir/ large
# enough to need two READDIRs, and a folder where neither exists (STATUS
# replies). Re-run it only to refresh the seeds; commit the result.
#   fuzz/make-sftp-seeds.sh
# Env: PHSYNC_FUZZ_BUILD (default <repo>/build-fuzz).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${PHSYNC_FUZZ_BUILD:-$root/build-fuzz}
CC=${CC:-clang} cmake -S "$root" -B "$build" -DPHSYNC_FUZZ=ON -DPHSYNC_TESTS=OFF \
	-DPHSYNC_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target sftp_seed_record -j2 >/dev/null
rec=$build/fuzz/sftp_seed_record

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Fixed contents, times and modes, so a refresh changes little.
mk() { # mk DIR NFILES
	mkdir -p "$1/dir/sub"
	python3 - "$1" "$2" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
with open(os.path.join(d, "file.jpg"), "wb") as f:
    f.write(bytes((i * 7 + 3) & 0xff for i in range(1100)))
names = ["IMG_0001.jpg", "caf\u00e9.png", "sp ace.txt", "empty.dat"] + ["f%03d.jpg" % i for i in range(n)]
for i, name in enumerate(names):
    with open(os.path.join(d, "dir", name), "wb") as f:
        f.write(b"" if name == "empty.dat" else b"x" * (i + 1))
    os.utime(os.path.join(d, "dir", name), (1700000000 + i, 1700000000 + i))
os.symlink("IMG_0001.jpg", os.path.join(d, "dir", "link.jpg"))
PY
}
mk "$tmp/small" 0
mk "$tmp/big" 120
mkdir -p "$tmp/missing"

out=$here/corpus/fuzz_sftp
mkdir -p "$out"
for srv in /usr/lib/openssh/sftp-server /usr/libexec/gesftpserver; do
	[ -x "$srv" ] || continue
	tag=$(basename "$srv")
	for sc in small big missing; do
		"$rec" "$srv" "$tmp/$sc" "$out/$tag-$sc"
	done
done

# The NAME bodies, for fuzz_sftp_names.
python3 - "$out" "$here/corpus/fuzz_sftp_names" <<'PY'
import os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for fn in sorted(os.listdir(src)):
    data = open(os.path.join(src, fn), "rb").read()[1:]
    p, k = 0, 0
    while p + 5 <= len(data):
        n = struct.unpack_from(">I", data, p)[0]
        if data[p + 4] == 104:  # SSH_FXP_NAME: id, then the body
            with open(os.path.join(dst, "%s-%d" % (fn, k)), "wb") as f:
                f.write(data[p + 9:p + 4 + n])
            k += 1
        p += 4 + n
PY
ls -l "$out" "$here/corpus/fuzz_sftp_names"
