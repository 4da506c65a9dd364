"""Small console entry points."""
import os


def user_dir() -> str:
    """Absolute path of this package, the value for fairseq's ``--user-dir``."""
    return os.path.dirname(os.path.abspath(__file__))


def print_user_dir() -> None:
    print(user_dir())
