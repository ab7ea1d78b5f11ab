"""Causes (evidence rules → cause) and the catalog of human text."""
