#!/usr/bin/env python3
"""Looks names up, as Ardour does, in the MIDNAM documents Ardour read from
Spinet (recorded by midnam-spy.c; scripts/ardour-test.sh). Standard library
only.

  midnam.py SPY_LOG WHAT [CHANNEL MSB/LSB PROGRAM [KEY] NAME]...

Each expectation names a channel (1-16), a bank (Bank Select MSB/LSB), a
program, optionally a key, and the name Ardour should show: the program's
name, or the key's in that program's note name list. The last document
Ardour read is the one it shows. Prints one line per check; exits 1 when
one fails."""
import re
import sys
import xml.etree.ElementTree as ET


def documents(path):
    text = open(path, encoding="utf-8").read()
    parts = re.split(r"<!-- spinet-midnam-spy model=(\S+) accepted=(\d) -->\n", text)
    return [(parts[i], parts[i + 1] == "1", parts[i + 2]) for i in range(1, len(parts) - 2, 3)]


def lookup(root, channel, bank, program, key):
    device = root.find("MasterDeviceNames")
    mode = device.find("CustomDeviceMode")
    name_set = next(a.get("NameSet") for a in mode.iter("ChannelNameSetAssign") if int(a.get("Channel")) == channel)
    channel_set = next(s for s in device.findall("ChannelNameSet") if s.get("Name") == name_set)
    for patch_bank in channel_set.findall("PatchBank"):
        cc = {int(c.get("Control")): int(c.get("Value")) for c in patch_bank.iter("ControlChange")}
        if (cc.get(0, 0) << 7) | cc.get(32, 0) != bank:
            continue
        for patch in patch_bank.iter("Patch"):
            if int(patch.get("Number")) != program:
                continue
            if key is None:
                return patch.get("Name")
            uses = patch.find("UsesNoteNameList")
            if uses is None:
                return None
            notes = next(n for n in device.findall("NoteNameList") if n.get("Name") == uses.get("Name"))
            return next((n.get("Name") for n in notes.findall("Note") if int(n.get("Number")) == key), None)
    return None


def main():
    path, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    docs = documents(path)
    failed = False

    def check(ok, line):
        nonlocal failed
        print(f"ardour-test: {'ok  ' if ok else 'FAIL'} {line}")
        failed |= not ok

    check(len(docs) > 0 and all(accepted for _, accepted, _ in docs),
          f"{what}: Ardour read {len(docs)} MIDNAM document(s) from Spinet, "
          f"{sum(1 for _, a, _ in docs if a)} accepted by its MIDNAM parser")
    if not docs:
        return 1
    model, _, text = docs[-1]
    root = ET.fromstring(text.encode("utf-8"))
    banks = sum(1 for _ in root.iter("PatchBank"))
    patches = sum(1 for _ in root.iter("Patch"))
    print(f"ardour-test: {what}: the last document (model {model}): {banks} banks, {patches} programs, "
          f"{sum(1 for _ in root.iter('Note'))} key names")
    while args:
        channel, (msb, lsb), program = int(args[0]), (int(v) for v in args[1].split("/")), int(args[2])
        if len(args) >= 5 and args[3].isdigit():
            key, name, args = int(args[3]), args[4], args[5:]
        else:
            key, name, args = None, args[3], args[4:]
        got = lookup(root, channel, (msb << 7) | lsb, program, key)
        place = f"channel {channel}, bank {msb}/{lsb}, program {program}" + (f", key {key}" if key is not None else "")
        check(got == name, f"{what}: Ardour's name for {place}: {got!r} (expected {name!r})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
