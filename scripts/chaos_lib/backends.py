"""Every backend the harness runs, by the name `--backend` takes."""
from .etcd import EtcdBackend
from .mysql import MysqlBackend
from .postgres import PgBouncerBackend, PostgresBackend
from .sentinel import SentinelBackend
from .servers import RedisBackend, SqliteBackend

BACKENDS = {"sqlite": SqliteBackend, "redis": RedisBackend, "postgres": PostgresBackend,
            "pgbouncer": PgBouncerBackend, "sentinel": SentinelBackend, "etcd": EtcdBackend,
            "mysql": MysqlBackend}
