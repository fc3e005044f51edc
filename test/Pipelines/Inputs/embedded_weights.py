"""embedded_weights.py SO BLOB: checks that the model library SO defines the
embedded weights symbol `mcc.weights` as exactly the bytes of BLOB, 64-byte
aligned, bound locally (hidden) and absent from the dynamic symbol table.
Reads the ELF directly (64-bit little-endian)."""
import struct
import sys

SYMBOL = b"mcc.weights"


def main():
    so, blob = sys.argv[1], sys.argv[2]
    data = open(so, "rb").read()
    expected = open(blob, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("not a 64-bit little-endian ELF: " + so)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        (name, type_, flags, addr, offset, size, link, info, align,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", data,
                                       shoff + i * shentsize)
        sections.append(dict(type=type_, addr=addr, offset=offset, size=size,
                             link=link, entsize=entsize))

    def symbols(type_):
        for sec in sections:
            if sec["type"] != type_:
                continue
            strtab = sections[sec["link"]]
            for k in range(sec["size"] // sec["entsize"]):
                name, info, other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", data, sec["offset"] + k * sec["entsize"])
                start = strtab["offset"] + name
                end = data.index(b"\0", start)
                yield data[start:end], info >> 4, shndx, value, size

    SHT_SYMTAB, SHT_DYNSYM = 2, 11
    if any(s[0] == SYMBOL for s in symbols(SHT_DYNSYM)):
        sys.exit("mcc.weights is in the dynamic symbol table")
    found = [s for s in symbols(SHT_SYMTAB) if s[0] == SYMBOL]
    if len(found) != 1:
        sys.exit("expected one mcc.weights in .symtab, found %d" % len(found))
    _, bind, shndx, value, size = found[0]
    sec = sections[shndx]
    bytes_ = data[sec["offset"] + value - sec["addr"]:][:size]
    print("size %s" % ("matches" if size == len(expected) else
                       "%d, expected %d" % (size, len(expected))))
    print("bytes %s" % ("match" if bytes_ == expected else "differ"))
    print("align64 %s" % ("yes" if value % 64 == 0 else "no"))
    print("binding %s" % ("local" if bind == 0 else "global (%d)" % bind))


if __name__ == "__main__":
    main()
