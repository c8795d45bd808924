"""seek"""
