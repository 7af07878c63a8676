import ctypes
import pathlib

_lib = ctypes.CDLL(str(pathlib.Path(__file__).with_name("libtiny.so")))
_lib.tiny_archs.restype = ctypes.c_char_p


def archs() -> str:
    return _lib.tiny_archs().decode()


def add(a: int, b: int) -> int:
    return _lib.tiny_add(a, b)
