"""Field encryption: MultiFernet keys from FIELD_ENCRYPTION_KEYS, payloads bound to row and field."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from platform_core.crypto import (
    SecretBinding,
    SecretDecryptError,
    decrypt_str,
    encrypt_str,
    reencrypt_str,
)

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
BINDING = SecretBinding(model="connectors.connector", org_id="7", row_id="abc", field="auth_secret")


@override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY])
def test_a_value_decrypts_under_the_binding_it_was_encrypted_for():
    token = encrypt_str("p@ss wörd", binding=BINDING)
    assert "p@ss" not in token
    assert decrypt_str(token, binding=BINDING) == "p@ss wörd"


@override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY])
@pytest.mark.parametrize(
    "other",
    [
        SecretBinding("connectors.connector", "8", "abc", "auth_secret"),  # another organisation
        SecretBinding("connectors.connector", "7", "abd", "auth_secret"),  # another row
        SecretBinding("connectors.connector", "7", "abc", "dsn"),  # another field
        SecretBinding("agents.modelconfig", "7", "abc", "auth_secret"),  # another model
    ],
    ids=["org", "row", "field", "model"],
)
def test_a_ciphertext_moved_to_another_org_row_field_or_model_does_not_decrypt(other):
    token = encrypt_str("s3cret", binding=BINDING)
    with pytest.raises(SecretDecryptError):
        decrypt_str(token, binding=other)


@override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY])
def test_a_tampered_token_does_not_decrypt():
    token = encrypt_str("s3cret", binding=BINDING)
    tampered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(SecretDecryptError):
        decrypt_str(tampered, binding=BINDING)


def test_old_values_stay_readable_after_a_new_key_is_put_first_and_reencrypt_uses_it():
    with override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY]):
        old_token = encrypt_str("s3cret", binding=BINDING)
    with override_settings(FIELD_ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY]):
        assert decrypt_str(old_token, binding=BINDING) == "s3cret"
        new_token = reencrypt_str(old_token, binding=BINDING)
    with override_settings(FIELD_ENCRYPTION_KEYS=[NEW_KEY]):
        assert decrypt_str(new_token, binding=BINDING) == "s3cret"
        with pytest.raises(SecretDecryptError):
            decrypt_str(old_token, binding=BINDING)


def test_keys_are_independent_of_secret_key():
    with override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY], SECRET_KEY="one-secret-key-" * 4):
        token = encrypt_str("s3cret", binding=BINDING)
    with override_settings(FIELD_ENCRYPTION_KEYS=[OLD_KEY], SECRET_KEY="another-secret-key-" * 4):
        assert decrypt_str(token, binding=BINDING) == "s3cret"
    with override_settings(FIELD_ENCRYPTION_KEYS=[NEW_KEY], SECRET_KEY="one-secret-key-" * 4):
        with pytest.raises(SecretDecryptError):
            decrypt_str(token, binding=BINDING)


@pytest.mark.parametrize("keys", [[], ["not-a-fernet-key"]], ids=["empty", "malformed"])
def test_missing_or_malformed_keys_are_a_configuration_error(keys):
    with override_settings(FIELD_ENCRYPTION_KEYS=keys):
        with pytest.raises(ImproperlyConfigured):
            encrypt_str("s3cret", binding=BINDING)
