"""Small console entry points, and what the console doors share."""
import argparse
import os
from typing import Callable


def user_dir() -> str:
    """Absolute path of this package, the value for fairseq's ``--user-dir``."""
    return os.path.dirname(os.path.abspath(__file__))


def print_user_dir() -> None:
    print(user_dir())


def int_at_least(minimum: int, why: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``; ``why`` ends the error for a smaller one."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}: {why}")
        return value

    return parse
