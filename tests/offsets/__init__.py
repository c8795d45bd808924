"""offsets"""
