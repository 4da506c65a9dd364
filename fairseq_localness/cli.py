"""Small console entry points, and what the console doors share."""
import argparse
import os
from typing import Callable, Optional


def user_dir() -> str:
    """Absolute path of this package, the value for fairseq's ``--user-dir``."""
    return os.path.dirname(os.path.abspath(__file__))


def print_user_dir() -> None:
    print(user_dir())


def int_at_least(minimum: int, why: Optional[str] = None) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``; ``why`` ends the error for a smaller one (by default
    ``must be MINIMUM or more``)."""
    why = why or f"must be {minimum} or more"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}: {why}")
        return value

    return parse


def device_argument(text: str) -> str:
    """An argparse type: a torch device name (or ``auto``), checked when the arguments are read, before any
    checkpoint is loaded."""
    if text == "auto":
        return text
    import torch

    try:
        torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a device: auto, cpu, cuda, cuda:1, ...") from None
    if text.startswith("cuda") and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text}: no CUDA device is available here (use cpu)")
    return text
