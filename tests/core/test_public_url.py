"""PUBLIC_URL as mails and GitHub are shown it: without its user and password, else as written."""

from bot.core.public_url import without_userinfo


def test_a_user_and_password_are_dropped_and_nothing_else():
    assert without_userinfo("https://deploy.example.com/ops") == "https://deploy.example.com/ops"
    assert without_userinfo("https://bot:s3cret@deploy.example.com:8443/ops") == "https://deploy.example.com:8443/ops"
    assert without_userinfo("http://bot:pw@[::1]:8000") == "http://[::1]:8000"  # an IPv6 host keeps its brackets
