"""Static caches: the engines that compute them and the manager that rebuilds them on change events."""

from cqels_endpoint.caches.engines import CACHE_ENGINES, CacheBuild, CacheEngine, LocalCacheEngine

__all__ = ["CACHE_ENGINES", "CacheBuild", "CacheEngine", "LocalCacheEngine"]
