"""Collectors: each gathers one kind of data and changes nothing."""
