"""Suite-wide pytest configuration: the markers the tiers use."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "real_model: runs a real small model on llama.cpp's server (tests/real_model.py); "
        'skipped when it is not installed, deselect with -m "not real_model"',
    )
