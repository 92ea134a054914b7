"""dramigrate: migrate device-plugin accelerator requests to Kubernetes DRA."""

__version__ = "0.1.0"
