"""`python -m stateroom.serve`: Granian's command line, and the metrics directory at start."""

import sys

from stateroom import serve


def test_the_command_serves_the_wsgi_app_and_options_given_win():
    argv = serve.command(["--workers", "2", "--blocking-threads", "64"])
    assert argv[:3] == [sys.executable, "-m", "granian"]
    assert argv[-1] == "stateroom.wsgi:application"
    assert argv[argv.index("--interface") + 1] == "wsgi"
    # The defaults come first; Granian's parser takes the last of an option given twice.
    threads = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--blocking-threads"]
    assert threads == ["1", "64"]


def test_start_empties_the_metrics_directory_of_an_earlier_run(tmp_path, monkeypatch):
    directory = tmp_path / "multiproc"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    serve.empty_metrics_dir()  # made when missing
    assert directory.is_dir()
    (directory / "counter_123.db").write_bytes(b"old")
    (directory / "gauge_livesum_123.db").write_bytes(b"old")
    (directory / "README").write_text("not prometheus_client's")
    serve.empty_metrics_dir()
    assert sorted(p.name for p in directory.iterdir()) == ["README"]


def test_without_a_metrics_directory_start_touches_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    serve.empty_metrics_dir()
    assert list(tmp_path.iterdir()) == []
