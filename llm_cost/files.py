"""Reading inputs and writing outputs safely: regular files only, encodings named, atomic writes.

Inputs (configs, datasheets, profiles, points, traces) are read through `read_text`: the path must
name a regular file (a FIFO or a device is refused at once instead of blocking; a name too long for
the file system is an error naming it, shortened), at most `MAX_INPUT_BYTES`; the text is UTF-8, with
or without a byte-order mark, or UTF-16 with one; anything else is refused naming what it looks like
(`not UTF-8 (byte 0xe9 at offset 12: Latin-1 or Windows-1252?)`), never decoded by guess. JSON goes
through `parse_json`: a key given twice, nesting past `MAX_JSON_DEPTH` or an integer of more than
`MAX_INT_DIGITS` digits is refused (json would keep the last key silently, recurse, or raise).

Outputs go through `output_path` before any work (the folder exists, the name is a file, it is not
one of the inputs, an existing file is replaced only when `force`), then `atomic_write`: the bytes go
to a temporary file beside the target, renamed into place when complete, so that an interrupt leaves
the old file or the new one, never a truncated one.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from llm_cost.errors import ConfigError, InvalidValueError, short_repr

MAX_INPUT_BYTES = 256 * 10**6  # an input larger than this is not a config, a trace or a points file
MAX_JSON_DEPTH = 64  # Hugging Face configs nest 3 or 4 levels
MAX_INT_DIGITS = 4000  # below Python's 4,300-digit limit of int(str); the readers refuse the range
BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def shown(path) -> str:
    """A path as messages print it: whole up to 80 characters, else its start, end and length."""
    text = str(path)
    return text if len(text) <= 80 else f"{text[:40]}...{text[-20:]} ({len(text)} characters)"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def input_file(path, what: str, error=ConfigError) -> Path:
    """`path` as a Path if it names a regular file, else `error` naming `what` and why (one line).

    Never opens the file: a FIFO would block the open until a writer comes.
    """
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        raise error(f"{what} file not found: {shown(file)} (cannot read it)") from None
    except OSError as err:
        raise error(f"{what} file {shown(file)}: cannot read it ({err.strerror or type(err).__name__})") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{what} file {shown(file)}: not a valid file name") from None
    if not stat.S_ISREG(mode):
        raise error(f"{what} file {shown(file)}: is {_kind(mode)}, not a regular file")
    return file


def decode(data: bytes, where: str, error=ConfigError) -> str:
    """The text of `data`: UTF-8 (a BOM dropped) or UTF-16 with a BOM; else `error` naming the encoding
    it looks like."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec)
            except UnicodeDecodeError:
                raise error(f"{where}: starts with a {codec} byte-order mark but is not {codec} text") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        looks = ("UTF-16 without a byte-order mark" if data.count(b"\x00") > len(data) // 4
                 else "Latin-1 or Windows-1252")
        raise error(f"{where}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}; it looks like "
                    f"{looks}): save it as UTF-8") from None


def read_text(path, what: str, error=ConfigError) -> str:
    """The text of the regular file at `path` (`input_file`, `decode`), at most MAX_INPUT_BYTES."""
    file = input_file(path, what, error)
    try:
        size = file.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise error(f"{what} file {shown(file)}: {size / 1e6:.0f} MB, more than the "
                        f"{MAX_INPUT_BYTES / 1e6:.0f} MB an input may hold")
        data = file.read_bytes()
    except OSError as err:
        raise error(f"{what} file {shown(file)}: cannot read it ({err.strerror or type(err).__name__})") from None
    return decode(data, f"{what} file {shown(file)}", error)


def _object(pairs, where: str, error):
    out = {}
    for key, value in pairs:
        if key in out:
            raise error(f"{where}: key {short_repr(key)} is given twice (json would keep the last silently)")
        out[key] = value
    return out


def _int(text: str, where: str, error):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise error(f"{where}: an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _depth(value) -> int:
    """The nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(text: str, where: str, error=ConfigError):
    """`text` parsed as JSON, refusing repeated keys, deep nesting and huge integers (module doc); NaN
    and Infinity are read as floats, for the readers' range checks to refuse by name."""
    depth = 0
    for ch in text:  # count before parsing: json recurses once per level
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                break
        elif ch in "]}":
            depth -= 1
    try:
        if depth > MAX_JSON_DEPTH:
            raise RecursionError
        data = json.loads(text, object_pairs_hook=lambda pairs: _object(pairs, where, error),
                          parse_int=lambda digits: _int(digits, where, error))
    except RecursionError:
        raise error(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise error(f"{where}: not JSON (malformed JSON at line {err.lineno}: {err.msg})") from None
    if _depth(data) > MAX_JSON_DEPTH:  # brackets inside strings can hide it from the count above
        raise error(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def read_json(path, what: str, error=ConfigError):
    """The JSON value in the file at `path` (`read_text`, `parse_json`); every error names the file."""
    text = read_text(path, what, error)
    return parse_json(text, f"{what} file {shown(path)}", error)


# ---- outputs ------------------------------------------------------------------------------

def _same(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def output_path(path, *, force: bool = False, inputs=(), suffixes=None, param: str = "output") -> Path:
    """The output file `path`, checked before any work: a file name (with one of `suffixes` when
    given) in an existing folder, not one of `inputs`, and not an existing file unless `force`.

    Raises
    ------
    InvalidValueError
        One line naming `param`, the path (shortened) and what to do.
    """
    text = str(path) if path is not None else ""
    if not text.strip() or text.endswith(("/", "\\")):
        ending = f" ending in {' or '.join(suffixes)}" if suffixes else ""
        raise InvalidValueError(f"{param} must name a file{ending}, got {short_repr(text)}", params=(param,))
    file = Path(text)
    if suffixes and file.suffix.lower() not in suffixes:
        raise InvalidValueError(f"{param} must end in {' or '.join(suffixes)}, got {shown(file)}", params=(param,))
    if len(file.name.encode()) > 255:
        raise InvalidValueError(f"{param}: a file name of {len(file.name.encode())} bytes (at most 255): "
                                f"{shown(file)}", params=(param,))
    try:
        parent_ok = file.parent.is_dir()
        exists, is_file = file.exists(), file.is_file()
    except OSError as err:
        raise InvalidValueError(f"{param} {shown(file)}: {err.strerror or type(err).__name__}",
                                params=(param,)) from None
    if not parent_ok:
        raise InvalidValueError(f"{param}: the folder does not exist: {shown(file.parent)}", params=(param,))
    for given in inputs:
        if given is not None and (_same(file, Path(str(given))) or file.resolve() == Path(str(given)).resolve()):
            raise InvalidValueError(f"{param} {shown(file)} is an input of this command: write elsewhere",
                                    params=(param,))
    if exists and not is_file:
        raise InvalidValueError(f"{param} {shown(file)} exists and is not a regular file", params=(param,))
    if exists and not force:
        raise InvalidValueError(f"{param} {shown(file)} exists: give force to replace it", params=(param, "force"))
    if not os.access(file.parent, os.W_OK):
        raise InvalidValueError(f"{param}: cannot write in the folder {shown(file.parent)}", params=(param,))
    return file


def atomic_write(path, write, param: str = "output") -> Path:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it onto `path` (atomic on POSIX);
    on any error or interrupt the temporary file is removed and `path` is left as it was."""
    import tempfile

    file = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name[:40]}.", suffix=f".tmp{file.suffix}")
    except OSError as err:
        raise InvalidValueError(f"{param} {shown(file)}: cannot write it ({err.strerror or err})",
                                params=(param,)) from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, file)
    except OSError as err:
        _remove(tmp)
        raise InvalidValueError(f"{param} {shown(file)}: cannot write it ({err.strerror or err})",
                                params=(param,)) from None
    except BaseException:
        _remove(tmp)
        raise
    return file


def write_text(path, text: str, param: str = "output") -> Path:
    """`text` written to `path` as UTF-8 through `atomic_write`."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), param)


def _remove(tmp) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
