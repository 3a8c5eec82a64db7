#!/usr/bin/env python3
"""Carves the ELF objects out of driver cache files and disassembles each.

Usage: carve_sass.py OUT_DIR FILE_OR_DIR...

NVIDIA's Vulkan driver keeps compiled pipelines in its pipeline-cache data and its shader disk
cache; where those hold the machine code as embedded ELF objects (cubins), each is written to
OUT_DIR/elfN.cubin and disassembled with `cuobjdump -sass` (else `nvdisasm`) into elfN.sass, and
one line a object counts its instructions by kind. A measurement aid for docs/design/coop-gemm.md:
what the tensor-core GEMM's fragment loads, decode and barriers compile to.
"""
import os
import re
import struct
import subprocess
import sys

MAGIC = b"\x7fELF"


def elf_size(buf, at):
    if buf[at + 4] != 2:  # 64-bit only
        return None
    (shoff,) = struct.unpack_from("<Q", buf, at + 0x28)
    shentsize, shnum = struct.unpack_from("<HH", buf, at + 0x3A)
    end = shoff + shentsize * shnum
    if shentsize != 64 or shnum == 0 or shnum > 4096 or at + end > len(buf):
        return None
    for i in range(shnum):
        off, size = struct.unpack_from("<QQ", buf, at + shoff + i * 64 + 0x18)
        typ = struct.unpack_from("<I", buf, at + shoff + i * 64 + 4)[0]
        if typ != 8:  # SHT_NOBITS takes no bytes
            end = max(end, off + size)
    return end if at + end <= len(buf) else None


def files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in names:
                    yield os.path.join(root, n)
        elif os.path.isfile(p):
            yield p


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in files(paths):
        buf = open(path, "rb").read()
        magics = buf.count(MAGIC)
        print(f"{path}: {len(buf)} bytes, {magics} ELF magics")
        at = buf.find(MAGIC)
        while at >= 0:
            size = elf_size(buf, at)
            if size:
                cubin = os.path.join(out, f"elf{n}.cubin")
                open(cubin, "wb").write(buf[at : at + size])
                sass = cubin[:-6] + ".sass"
                text = ""
                for cmd in (["cuobjdump", "-sass", cubin], ["nvdisasm", "-c", cubin]):
                    try:
                        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                    except (OSError, subprocess.TimeoutExpired) as e:
                        text += f"# {cmd[0]}: {e}\n"
                        continue
                    text += r.stdout
                    if r.returncode == 0 and r.stdout.strip():
                        break
                    text += f"# {cmd[0]} rc={r.returncode}: {r.stderr[:500]}\n"
                open(sass, "w").write(text)
                ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", text)
                kinds = {}
                for op in ops:
                    kinds[op] = kinds.get(op, 0) + 1
                top = " ".join(f"{k}:{v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:40])
                print(f"  elf{n} at {at} size {size}: {len(ops)} instructions; {top}")
                n += 1
                at = buf.find(MAGIC, at + size)
            else:
                at = buf.find(MAGIC, at + 4)
    print(f"{n} ELF objects")


if __name__ == "__main__":
    main()
