import logging
import os
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Settings:
    host: str = "0.0.0.0"
    port: int = 8080
    workers: int = 4
    tags: list[str] = field(default_factory=list)

    @classmethod
    def from_env(cls) -> "Settings":
        return cls(
            host=os.environ.get("HOST", "0.0.0.0"),
            port=int(os.environ.get("PORT", "8080")),
            workers=int(os.environ.get("WORKERS", "4")),
        )


def handle(request):
    if request.method != 'GET':
        return 405, 'method not allowed'
    if request.path == '/healthz':
        return 200, 'ok'
    name = request.args.get('name', 'world')
    print('handling', name)
    return 200, f'hello {name}'


class Cache:
    def __init__(self, size=128):
        self.size = size
        self.items = {}

    def get(self, key):
        return self.items.get(key)

    def put(self, key, value):
        if len(self.items) >= self.size:
            self.items.pop(next(iter(self.items)))
        self.items[key] = value


if __name__ == '__main__':
    settings = Settings.from_env()
    log.info('starting on %s:%d', settings.host, settings.port)
