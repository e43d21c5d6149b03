"""Machine details and the one results table (console, Markdown, JSON)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from .database import connect


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        )
        return out.stdout.strip() + (" (+uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine(url: str) -> dict:
    with connect(url) as conn:
        pg_version = conn.execute("SHOW server_version").fetchone()[0]
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]
            for name in ("shared_buffers", "work_mem", "max_connections", "synchronous_commit")
        }
    import django

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "django": django.get_version(),
        "psycopg": _version("psycopg"),
        "gunicorn": _version("gunicorn"),
        "postgresql": pg_version,
        "postgresql_settings": settings,
        "git_commit": _git_commit(),
    }


def render_console(results: dict) -> str:
    return render_markdown(results)


def render_markdown(results: dict) -> str:
    return "```json\n" + json.dumps(results, indent=2, default=str) + "\n```\n"


def write(results: dict, markdown: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "latest.json"
    md_path = out / "latest.md"
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    md_path.write_text(markdown)
    return [json_path, md_path]
