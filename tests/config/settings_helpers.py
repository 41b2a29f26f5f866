"""What the settings tests share: an environment with nothing of this machine's in it, and the
problems a deploybot.toml is refused with."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.config.settings_file import FileError, load


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only what a test sets: nothing from this machine's environment or a .env file (imported
    by a test module, it applies to each of its tests)."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)


def problems_of(tmp_path: Path, text: str) -> list[str]:
    """`text` as deploybot.toml is refused: its problems, each without the file's name (which
    every one of them must start with)."""
    path = tmp_path / "deploybot.toml"
    path.write_text(text)
    with pytest.raises(FileError) as e:
        load(path)
    prefix = f"{path}: "
    assert all(line.startswith(prefix) for line in e.value.problems)
    return [line.removeprefix(prefix) for line in e.value.problems]
