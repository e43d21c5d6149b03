"""The bench's peers reach the same server as the app: on a TCP port or on a socket."""

from sqlalchemy.engine import make_url

from bench.agents import sqlalchemy_url


def test_a_socket_directory_goes_to_libpq_as_the_host_parameter():
    # The embedded server's DATABASE_URL: its socket directory, percent-encoded, as the host.
    url = make_url(sqlalchemy_url("postgres://owner@%2Fwork%2Fdata%2Fpg/bench"))
    assert (url.drivername, url.username, url.host, url.port, url.database) == (
        "postgresql+psycopg",
        "owner",
        None,
        None,
        "bench",
    )
    assert url.query == {"host": "/work/data/pg"}


def test_a_tcp_server_keeps_its_address_and_password():
    url = make_url(sqlalchemy_url("postgresql://owner:p%40ss@127.0.0.1:5433/bench"))
    assert (url.host, url.port, url.password, url.database, url.query) == (
        "127.0.0.1",
        5433,
        "p@ss",
        "bench",
        {},
    )
