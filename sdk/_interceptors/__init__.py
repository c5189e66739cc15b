"""Interceptor shapes (client and worker), as temporalio defines them; leaf modules the runtime and the worker both import."""
