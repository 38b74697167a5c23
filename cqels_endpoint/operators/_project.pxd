# distutils: language = c++
"""Compiled projection (see _project.pyx; twin: reference/project.py)."""
