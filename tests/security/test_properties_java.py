"""Config update bodies and files are read as Java's Properties.load reads them, and written so that it
reads back what was written: checked against the JDK itself (the servers' Java 17) on random texts.

Before issue #46, 134 of these 3,000 texts read otherwise (a comment line after a continuation that left
nothing, an empty logical line taken for an empty key, ...).
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from rocketpy.javacompat import properties

pytestmark = [
    pytest.mark.slow,  # a JVM
    pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac, java)"),
]

#: prints, for each file given, its keys and values as Properties.load(InputStream) reads them, sorted,
#: every character outside printable ASCII as \\uXXXX (a UTF-16 unit); ERROR when load throws
DUMP = r"""
import java.nio.file.*;
import java.util.*;

public class PropsDump {
    static String esc(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray())
            b.append(c >= 0x20 && c < 0x7f && c != '\\' ? String.valueOf(c) : String.format("\\u%04x", (int) c));
        return b.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String a : args) {
            Properties p = new Properties();
            try {
                p.load(new java.io.ByteArrayInputStream(Files.readAllBytes(Paths.get(a))));
            } catch (IllegalArgumentException e) {
                System.out.println("ERROR");
                continue;
            }
            TreeMap<String, String> m = new TreeMap<>();
            for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
            StringBuilder b = new StringBuilder("OK");
            for (Map.Entry<String, String> e : m.entrySet())
                b.append('\t').append(esc(e.getKey())).append('=').append(esc(e.getValue()));
            System.out.println(b);
        }
    }
}
"""

PIECES = ["a", "b", "=", ":", " ", "\t", "\f", "\\", "\n", "\r", "\r\n", "#", "!", "u", "0", "00e9", "\\u0041",
          "\\u12", "\\n", "é", "k", "\\\n", "\\\r\n"]
FIXED = ["\\", "\\\n", "\\\r\n", "\\\r", "\\\n#x=1", "a=b\\", "a=b\\\n", "\\\n\n", "x\\\n  \\\n  y=1",
         "  \\\n# c\nk=v", "k\\\n#v", "=", " = ", "a\\\\", "a:\\u0041\\u00e9", "\\uD83D\\uDE00=x"]


def _esc(text: str) -> str:
    units = text.encode("utf-16-be", "surrogatepass")
    codes = (units[i] << 8 | units[i + 1] for i in range(0, len(units), 2))
    return "".join(chr(u) if 0x20 <= u < 0x7F and u != 0x5C else f"\\u{u:04x}" for u in codes)


def _ours(path: Path) -> str:
    try:
        props = properties.load_file(path)
    except properties.PropertiesError:
        return "ERROR"
    entries = sorted((_esc(k), _esc(v)) for k, v in props.items())
    # Java's TreeMap sorts by UTF-16 units: the escaped forms sort alike for these texts' characters
    return "\t".join(["OK", *(f"{k}={v}" for k, v in entries)])


def _java(tmp_path: Path, files: list[Path]) -> list[str]:
    source = tmp_path / "PropsDump.java"
    source.write_text(DUMP)
    subprocess.run(["javac", "-d", str(tmp_path), str(source)], check=True, timeout=120)
    done = subprocess.run(["java", "-cp", str(tmp_path), "PropsDump", *map(str, files)], check=True,
                          capture_output=True, text=True, timeout=300)
    return [line for line in done.stdout.splitlines()]


def _sorted_line(line: str) -> str:
    head, *entries = line.split("\t")
    return "\t".join([head, *sorted(entries)])


def _differences(tmp_path: Path, files: list[Path]) -> list[tuple[bytes, str, str]]:
    java = _java(tmp_path, files)
    return [(path.read_bytes(), want, got) for path, want in zip(files, java, strict=True)
            if _sorted_line(want) != _sorted_line(got := _ours(path))]


@pytest.mark.timeout(600)
def test_texts_are_read_as_java_reads_them(tmp_path):
    """Properties.load(InputStream) of JDK 17 and properties.load_file, on 3,016 texts of escapes, line
    breaks, continuations, separators and comments."""
    rng = random.Random(1)
    texts = FIXED + ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(3000)]
    files = []
    for i, text in enumerate(texts):
        path = tmp_path / f"read-{i}"
        path.write_bytes(text.encode("latin-1") if all(ord(c) < 256 for c in text) else text.encode())
        files.append(path)
    assert _differences(tmp_path, files) == []


@pytest.mark.timeout(600)
def test_what_store_writes_java_reads_back(tmp_path):
    """properties.store, the servers' one writer of properties files: ASCII text that loads and Java's
    Properties.load both read back as the keys and values written (backslashes, line breaks, separators,
    comment marks, control characters, non-Latin-1 and astral characters)."""
    rng = random.Random(2)
    alphabet = "ab =:#!\\\t\n\r\f\x00\x7f\xe9\u4e2d\U0001F600 \\u"
    files = []
    for i in range(1000):
        props = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))):
                 "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(0, 4))}
        text = properties.store(props)
        assert text.isascii() and properties.loads(text) == props
        path = tmp_path / f"stored-{i}"
        path.write_text(text)
        files.append(path)
    assert _differences(tmp_path, files) == []
