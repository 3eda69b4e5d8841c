"""Filesystems behind URI schemes."""
