import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models




def relabel_content_types(apps, schema_editor):
    """Keep admin history and permissions: the moved models' content types change app label."""
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in ("job", "apitoken"):
        if not content_type.objects.filter(app_label="core", model=model).exists():
            content_type.objects.filter(app_label="annotation", model=model).update(
                app_label="core"
            )


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0005_job_and_token_leave_for_core'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # The tables keep their names (db_table): the move to core changes the migration state only.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ApiToken',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('prefix', models.CharField(help_text='First characters, to recognise a key.', max_length=12)),
                        ('key_hash', models.CharField(max_length=64, unique=True)),
                        ('scope', models.CharField(default='read', max_length=20)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('last_used_at', models.DateTimeField(blank=True, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotation_apitoken',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='Job',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('import', 'Import samples'), ('aggregate', 'Aggregate votes'), ('build_version', 'Build dataset version'), ('score_judge', 'Score a judge')], max_length=20)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=10)),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('done', models.PositiveIntegerField(default=0)),
                        ('total', models.PositiveIntegerField(default=0)),
                        ('message', models.CharField(blank=True, max_length=300)),
                        ('error', models.TextField(blank=True)),
                        ('result', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('task', models.CharField(blank=True, max_length=100)),
                        ('enqueued_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('max_attempts', models.PositiveSmallIntegerField(default=3)),
                        ('claimed_by', models.CharField(blank=True, max_length=200)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='annotation.project')),
                    ],
                    options={
                        'db_table': 'annotation_job',
                        'ordering': ['-created_at'],
                        'indexes': [models.Index(fields=['project', 'kind', '-created_at'], name='job_recent'), models.Index(fields=['status', 'heartbeat_at'], name='job_lease')],
                    },
                ),
            ],
        ),
        migrations.RunPython(relabel_content_types, migrations.RunPython.noop),
    ]
